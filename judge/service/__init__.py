"""The HTTP service: JSON API under ``/v1`` and the review pages (``judge serve``).

``create_app`` lives in :mod:`judge.service.app`; importing this package does not import
FastAPI."""
