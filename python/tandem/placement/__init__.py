"""tandem.placement"""
