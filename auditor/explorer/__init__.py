"""The live run explorer: `gradledger explorer` (app.py), its views (views.py), the chain followed (live.py), losses."""
