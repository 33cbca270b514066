"""Serving agents over HTTP (the Agent Protocol): work in progress, see issue 29."""
