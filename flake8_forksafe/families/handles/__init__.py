"""The handles hazard family: its facts and its fixes."""
