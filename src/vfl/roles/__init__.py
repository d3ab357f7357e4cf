"""The roles: a party (features, bottom model, local steps) and the server (labels, head, loss)."""
