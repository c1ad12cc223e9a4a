"""One module per resource; each exposes a flask-smorest Blueprint named `blp`."""
