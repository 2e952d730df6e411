"""The admin page of the upload worker: a static page (``static/``) and the few JSON routes it needs
beside the existing ones (``routes.register``), served at ``/admin``."""
