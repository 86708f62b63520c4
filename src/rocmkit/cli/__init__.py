"""The command line: the only place that parses arguments and prints."""
