"""The processes hazard family: its facts and its fixes."""
