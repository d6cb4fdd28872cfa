"""The records ledger's views (``/records?view=``), named where the page parameters can read them without
loading the ledger (views/params.py declares the closed list; readmodel/pages_records.py builds each)."""

VIEWS = ["current", "recently-broken", "history"]
