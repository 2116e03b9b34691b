"""Wrapper kept for the commands in README.md and docs: the code is enzh/tools/profile.py."""

from enzh.tools.profile import main

raise SystemExit(main())
