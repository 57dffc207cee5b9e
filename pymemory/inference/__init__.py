"""Inference runtimes: one protocol, onnxruntime in CPython and onnxruntime-web in the browser."""

from .runtime import InferenceRuntime, InferenceSession

__all__ = ["InferenceRuntime", "InferenceSession"]
