"""The service's routers: the HTTP API (api.py), students' pages (student.py), instructors'
(dashboard.py)."""
