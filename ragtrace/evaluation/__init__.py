"""Evaluation core shared by the online consumers and the offline tools."""
