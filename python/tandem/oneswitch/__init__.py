"""tandem.oneswitch"""
