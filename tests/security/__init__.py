"""Security suite: tenant isolation over every route, token and key abuse, input limits."""
