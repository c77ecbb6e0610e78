"""tandem.experiments"""
