"""Clients of chunkraft: the controller RPC client (producers and consumers come later)."""
