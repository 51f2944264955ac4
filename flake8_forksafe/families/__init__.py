"""One package per hazard family (handles, pickling, processes, cuda, rng): its facts and its fixes."""
