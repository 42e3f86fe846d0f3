"""Test support shared across the suite: fakes of the outside world and the fixtures that start them."""
