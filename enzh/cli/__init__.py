"""The ``enzh`` command line: one small module per command, all thin layers over the library's options."""
