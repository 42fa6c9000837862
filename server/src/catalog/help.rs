//! Help text as argparse prints it (`%(default)s`, `%(prog)s`, ... expanded).
