"""The app's views; each shows a part of a session snapshot and is refreshed only while on screen."""
