"""Documents: text, HTML, Markdown, subtitles, Word, JSONL and TSV translated with their structure kept.

Above the runtime (it uses :class:`enzh.runtime.translator.Translator` and :mod:`enzh.runtime.segment`);
the optional parsers (lxml, python-docx, markdown-it-py, OpenCC) come with the ``[documents]`` extra.
"""
