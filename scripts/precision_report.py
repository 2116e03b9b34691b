"""Wrapper kept for the commands in README.md and docs: the code is enzh/tools/precision_report.py."""

from enzh.tools.precision_report import main

raise SystemExit(main())
