from memdir._launch import main

main()
