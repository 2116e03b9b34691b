"""Bounds on what a document may hold, checked while it is read so that hostile input costs little.

Every bound is far above what real documents need (measured on the 48 files of ``../shared/realdocs``: inline
marks nest at most 5 deep, a document has at most 6,418 marks, a .docx at most 30 members, 222 kB unpacked and a
member ratio of 26.5), and low enough that the recursive placement of marks stays far from Python's recursion
limit and the work stays linear in the input. Going over one is a :class:`DocumentError` that names the bound.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence

from enzh.documents.errors import DocumentError
from enzh.documents.inline import Block, mark_parents

MAX_DEPTH = 256  # inline marks open inside each other (HTML inline tags, Markdown emphasis and links)
MAX_MARKS = 100_000  # inline marks in one document
MAX_PARAGRAPHS = 100_000  # paragraphs in the translated parts of a package (w:p of a .docx)
MAX_XML_ELEMENTS = 5_000_000  # elements in the XML parts a package format parses, all of them together
MAX_ZIP_MEMBERS = 10_000  # members of a .docx
MAX_ZIP_BYTES = 256 * 1024 * 1024  # the declared uncompressed sizes of a .docx's members, summed
MAX_ZIP_RATIO = 200  # uncompressed / compressed size of a member over RATIO_FROM bytes
RATIO_FROM = 1024 * 1024  # smaller members may compress as well as they like (they cannot inflate far)


def over(what: str, limit: int, name: str) -> DocumentError:
    return DocumentError(f"{what}, over the limit of {limit:,} (enzh.documents.limits.{name})")


def check_depth(depth: int) -> None:
    """Raise when inline marks are open ``depth`` deep."""
    if depth > MAX_DEPTH:
        raise DocumentError(
            f"inline markup nested more than {MAX_DEPTH} deep, over the limit (enzh.documents.limits.MAX_DEPTH)"
        )


def check_count(marks: int) -> None:
    """Raise when a document has ``marks`` inline marks."""
    if marks > MAX_MARKS:
        raise DocumentError(
            f"more than {MAX_MARKS:,} inline marks in the document, over the limit (enzh.documents.limits.MAX_MARKS)"
        )


def check_blocks(blocks: Sequence[Block]) -> None:
    """The bounds on marks for any format's blocks: their count in all and how deep they nest (in one pass)."""
    check_count(sum(len(block.marks) for block in blocks))
    for block in blocks:
        depths: list[int] = []
        for parent in mark_parents(block.marks):
            depths.append(1 + (depths[parent] if parent >= 0 else 0))
        for mark, depth in zip(block.marks, depths, strict=True):
            check_depth(depth - (mark.start == mark.end))  # a point (a space, a comment) inside the deepest tag


def check_zip(data: bytes, kind: str = ".docx") -> None:
    """Refuse a zip package by its central directory alone (nothing is inflated); data that is not a zip is
    left to the format's own reader. See :func:`check_zip_members`."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = package.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return  # not a zip: the format's own reader says so
    check_zip_members(members, kind)


def check_zip_members(members: Sequence[zipfile.ZipInfo], kind: str) -> None:
    """Refuse a package with too many members, declared sizes that sum over :data:`MAX_ZIP_BYTES`, or a large
    member that inflates over :data:`MAX_ZIP_RATIO` times. Python's zipfile never inflates a member past its
    declared size, so the declared sizes bound what is read."""
    if len(members) > MAX_ZIP_MEMBERS:
        raise over(f"the {kind} package has {len(members):,} members", MAX_ZIP_MEMBERS, "MAX_ZIP_MEMBERS")
    total = sum(member.file_size for member in members)
    if total > MAX_ZIP_BYTES:
        raise over(f"the {kind} package declares {total:,} bytes unpacked", MAX_ZIP_BYTES, "MAX_ZIP_BYTES")
    for member in members:
        ratio = member.file_size // max(member.compress_size, 1)
        if member.file_size > RATIO_FROM and ratio > MAX_ZIP_RATIO:
            raise DocumentError(
                f"the {kind} member {member.filename!r} inflates {ratio:,} times ({member.file_size:,} bytes), over "
                f"the limit of {MAX_ZIP_RATIO} (enzh.documents.limits.MAX_ZIP_RATIO)"
            )
