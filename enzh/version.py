"""The package version, in a leaf module: the exporter and the service read it without importing ``enzh``'s
lazy attributes (which reach into documents and the runtime)."""

__version__ = "0.1.0"
