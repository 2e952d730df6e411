"""What tests and the chaos script use to steer a real worker process: hold points and faults.

Nothing here is imported by a worker started the normal way (``edgeindex worker NAME``).
"""
