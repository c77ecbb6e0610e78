"""tandem.oneswitch"""

# translate.py defines the names compiler.py needs and then imports the compiler,
# so loading it first lets `import tandem.oneswitch.compiler` work on its own.
from . import translate as _translate  # noqa: F401
