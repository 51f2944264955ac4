"""The pickling hazard family: its facts and its fixes."""
