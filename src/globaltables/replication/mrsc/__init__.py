"""Strong mode (MRSC): the sans-I/O commit protocol of docs/mrsc.md."""
