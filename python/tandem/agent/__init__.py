"""tandem.agent"""
