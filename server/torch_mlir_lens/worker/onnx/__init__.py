"""ONNX models as an entry point: an `.onnx` file imported with torch-mlir's ONNX importer,
lowered to every target with each op located at its node, checked against onnxruntime.

- `model_file`: the file read and checked (size, format, opset, external data)
- `nodes`, `importing`: node identity through the importer; weights mapped, not read
- `node_diags`, `listing`, `lowerer`: one diagnostic per rejected node, partial IR, targets
- `reference`, `checks`: inputs (test data beside the model, else generated) and onnxruntime
- `fixes`: the ways past that belong to ONNX (opset upgrade, static shapes, folding), proven
- `via_onnx`: a PyTorch module through `torch.onnx.export` and this importer
- `jobs`: the worker's lower, verify and export jobs on an `.onnx` file
"""
