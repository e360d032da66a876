"""Every ninja router of the arena, each beside its schemas; mounted by forecaster/api.py."""
