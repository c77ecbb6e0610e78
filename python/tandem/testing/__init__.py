"""tandem.testing"""
