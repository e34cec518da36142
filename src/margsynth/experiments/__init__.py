"""The computations behind each notebook (one module per notebook), returning DataFrames."""
