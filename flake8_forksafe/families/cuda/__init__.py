"""The cuda hazard family: its facts and its fixes."""
