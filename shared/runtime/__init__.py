"""The Workers-like runtime: serving workers, the local stack, provisioning."""
