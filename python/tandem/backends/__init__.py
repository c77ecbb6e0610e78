"""tandem.backends"""
