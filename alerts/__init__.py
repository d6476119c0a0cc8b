"""Alerts: notification channels told when incidents open and resolve, and maintenance
windows during which they are not. Part of `monitoring`: its models live in its migrations."""
