"""COCO-format detection dataset backed by an LMDB image store (mmdet-style registry)."""
import json

import cv2
import lmdb
import numpy as np
from torch.utils.data import Dataset

from .registry import DATASETS


@DATASETS.register_module()
class CocoLmdbDataset(Dataset):
    CLASSES = ("person", "bicycle", "car", "motorcycle")

    def __init__(self, ann_file, lmdb_root, pipeline=None, flip_ratio=0.5, seed=0, test_mode=False):
        self.ann_file = ann_file
        self.lmdb_root = lmdb_root
        self.pipeline = pipeline
        self.flip_ratio = flip_ratio
        self.test_mode = test_mode
        self.data_infos = self.load_annotations(ann_file)
        self._open_db()
        self.flip_rng = np.random.RandomState(seed)  # FRK601: 24
        if not test_mode:
            self.data_infos = [info for info in self.data_infos if info["ann"]["bboxes"]]

    def load_annotations(self, ann_file):
        with open(ann_file) as f:
            coco = json.load(f)
        cat2label = {c["id"]: i for i, c in enumerate(coco["categories"])}
        anns_by_img = {}
        for ann in coco["annotations"]:
            anns_by_img.setdefault(ann["image_id"], []).append(ann)
        infos = []
        for img in sorted(coco["images"], key=lambda x: x["id"]):
            anns = anns_by_img.get(img["id"], [])
            boxes = [a["bbox"] for a in anns if not a.get("iscrowd", 0)]
            labels = [cat2label[a["category_id"]] for a in anns if not a.get("iscrowd", 0)]
            infos.append(dict(filename=img["file_name"], width=img["width"], height=img["height"],
                              ann=dict(bboxes=boxes, labels=labels)))
        return infos

    def _open_db(self):
        self.env = lmdb.open(self.lmdb_root, readonly=True, lock=False, readahead=False, meminit=False)  # FRK101: 19

    def __len__(self):
        return len(self.data_infos)

    def _read_image(self, key):
        with self.env.begin(write=False) as txn:
            buf = txn.get(key.encode())
        arr = np.frombuffer(buf, dtype=np.uint8)
        return cv2.imdecode(arr, cv2.IMREAD_COLOR)

    def __getitem__(self, idx):
        info = self.data_infos[idx]
        img = self._read_image(info["filename"])
        bboxes = np.array(info["ann"]["bboxes"], dtype=np.float32).reshape(-1, 4)
        if self.flip_rng.rand() < self.flip_ratio:
            img = img[:, ::-1].copy()
            w = img.shape[1]
            bboxes[:, 0] = w - bboxes[:, 0] - bboxes[:, 2]
        results = dict(img=img, gt_bboxes=bboxes, gt_labels=np.array(info["ann"]["labels"], dtype=np.int64))
        if self.pipeline is not None:
            results = self.pipeline(results)
        return results
