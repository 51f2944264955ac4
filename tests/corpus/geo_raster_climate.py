"""Remote-sensing and climate datasets (rasterio, netCDF4, zarr)."""
import netCDF4
import numpy as np
import rasterio
import torch
import zarr
from rasterio.windows import Window
from torch.utils.data import Dataset


class RasterTiles(Dataset):
    def __init__(self, tif_path, tile=256):
        self.src = rasterio.open(tif_path)  # FRK101: 19
        self.tile = tile
        self.rows = self.src.height // tile
        self.cols = self.src.width // tile

    def __len__(self):
        return self.rows * self.cols

    def __getitem__(self, i):
        r, c = divmod(i, self.cols)
        arr = self.src.read(window=Window(c * self.tile, r * self.tile, self.tile, self.tile))
        return torch.from_numpy(arr.astype(np.float32))


class RasterTilesPerItem(Dataset):
    """Opens the raster in a with block, in __init__ and per item (not flagged)."""

    def __init__(self, tif_path, tile=256):
        self.tif_path = tif_path
        with rasterio.open(tif_path) as src:
            self.shape = (src.height, src.width)
            self.nodata = src.nodata
        self.tile = tile

    def __len__(self):
        return (self.shape[0] // self.tile) * (self.shape[1] // self.tile)

    def __getitem__(self, i):
        r, c = divmod(i, self.shape[1] // self.tile)
        with rasterio.open(self.tif_path) as src:
            arr = src.read(1, window=Window(c * self.tile, r * self.tile, self.tile, self.tile))
        return torch.from_numpy(np.where(arr == self.nodata, 0, arr).astype(np.float32))


class ClimateCube(Dataset):
    def __init__(self, nc_path, zarr_path, var="t2m", window=8):
        self.nc = netCDF4.Dataset(nc_path, "r")  # FRK101: 18
        self.var = self.nc.variables[var]
        self.targets = zarr.open(zarr_path, mode="r")  # FRK101: 23
        self.window = window

    def __len__(self):
        return self.var.shape[0] - self.window

    def __getitem__(self, t):
        x = np.asarray(self.var[t:t + self.window], dtype=np.float32)
        y = np.asarray(self.targets[t + self.window], dtype=np.float32)
        return torch.from_numpy(x), torch.from_numpy(y)
