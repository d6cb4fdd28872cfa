from kernelindex.cli import main

main()
