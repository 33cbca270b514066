"""What ``checkpoint.serde`` uses: where the first value that cannot be packed sits
(``unpackable``), and how a stored time keeps its time zone (``zones``)."""
