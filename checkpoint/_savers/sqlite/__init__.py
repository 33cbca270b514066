"""The SQLite saver's own parts: opening its file (``open``), its leases table
(``leases``), and retention in SQL (``prune``)."""
