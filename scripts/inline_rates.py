"""Wrapper kept for the command in docs/html.md: the code is enzh/tools/inline_rates.py."""

from enzh.tools.inline_rates import main

raise SystemExit(main())
