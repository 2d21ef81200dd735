"""The installed package's version, for manifests, pages and `sim --version`."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("foursquare-sim")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

