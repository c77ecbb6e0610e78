"""tandem.model"""
