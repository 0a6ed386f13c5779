"""The review workbench in the service: intake from the held topic, the web pages, login."""
