"""The HTTP service (needs the ``[serve]`` extra): options, cross-request scheduler, app factory, web page."""
