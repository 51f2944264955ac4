"""Fixes shared by several rules."""
