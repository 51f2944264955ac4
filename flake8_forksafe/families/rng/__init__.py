"""The rng hazard family: its facts and its fixes."""
