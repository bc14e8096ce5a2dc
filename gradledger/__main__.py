from gradledger.cli import main

main()
