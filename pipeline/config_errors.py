"""The configuration error, importable by every module that declares parameters."""


class ConfigError(ValueError):
    """A bad parameter: the message names the file, the dotted key and the value."""
