"""Ray wrappers around the pipeline's plain worker classes.

This is the only package that imports Ray; the workers it wraps live in
``pipeline`` and are tested without a cluster.
"""
