"""Benchmarks: the hot steps against their reference tools, scaling, the forward pass, the rehearsal at paper scale."""
