"""The derived index (DESIGN.md stages 9–11): rebuildable at any time from card files alone.

Every module of this floor has its line in docs/ARCHITECTURE.md ("The modules").
"""
