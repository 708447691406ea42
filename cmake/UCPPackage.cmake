#===- cmake/UCPPackage.cmake - The CMake package of the ucp libraries ----===#
#
# add_mlir_library installs every library it makes through
# add_mlir_library_install, into MLIR's own export set (MLIRTargets). Ours
# belong to a package of their own, so this file replaces that function:
# each library is recorded here, and ucp_export_libraries() gives all of
# them the usage requirements an embedder needs (our headers and generated
# .inc files, MLIR's and LLVM's headers, LLVM's definitions), installs them
# in the export set UCPTargets and writes the package twice:
#
#   build/lib/cmake/ucp          the build tree, usable without installing
#   PREFIX/lib/cmake/ucp         the installed tree
#
# so that find_package(UCP CONFIG) and target_link_libraries(UCP::...) are
# all an embedder writes, against either tree.
#
#===----------------------------------------------------------------------===#

function(add_mlir_library_install name)
  set_property(GLOBAL APPEND PROPERTY UCP_LIBRARIES ${name})
endfunction()

# Writes the package's UCPConfig.cmake into `folder` with the given paths.
function(ucp_write_package_config folder include_dirs tools_dir plugins_dir)
  set(UCP_CONFIG_INCLUDE_DIRS "${include_dirs}")
  set(UCP_CONFIG_TOOLS_DIR "${tools_dir}")
  set(UCP_CONFIG_PLUGINS_DIR "${plugins_dir}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/UCPConfig.cmake.in
    ${folder}/UCPConfig.cmake @ONLY)
endfunction()

function(ucp_export_libraries)
  get_property(libraries GLOBAL PROPERTY UCP_LIBRARIES)
  separate_arguments(definitions UNIX_COMMAND "${LLVM_DEFINITIONS}")
  set(system_include_dirs ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
  list(REMOVE_DUPLICATES system_include_dirs)
  foreach(library ${libraries})
    target_include_directories(${library} INTERFACE
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
      $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
      $<INSTALL_INTERFACE:include>)
    target_include_directories(${library} SYSTEM INTERFACE
      ${system_include_dirs})
    target_compile_definitions(${library} INTERFACE ${definitions})
  endforeach()

  install(TARGETS ${libraries} EXPORT UCPTargets
    ARCHIVE DESTINATION lib COMPONENT ucp-libraries
    LIBRARY DESTINATION lib COMPONENT ucp-libraries
    RUNTIME DESTINATION bin COMPONENT ucp-libraries)
  install(EXPORT UCPTargets NAMESPACE UCP:: FILE UCPTargets.cmake
    DESTINATION lib/cmake/ucp COMPONENT ucp-cmake)
  export(EXPORT UCPTargets NAMESPACE UCP::
    FILE ${PROJECT_BINARY_DIR}/lib/cmake/ucp/UCPTargets.cmake)

  ucp_write_package_config(${PROJECT_BINARY_DIR}/lib/cmake/ucp
    "${PROJECT_SOURCE_DIR}/include;${PROJECT_BINARY_DIR}/include"
    "${PROJECT_BINARY_DIR}/bin" "${PROJECT_BINARY_DIR}/lib/plugins")
  # The installed config finds the prefix from where it lies.
  ucp_write_package_config(${PROJECT_BINARY_DIR}/lib/cmake/ucp/install
    "\${UCP_PREFIX}/include" "\${UCP_PREFIX}/bin"
    "\${UCP_PREFIX}/lib/ucp/plugins")
  install(FILES ${PROJECT_BINARY_DIR}/lib/cmake/ucp/install/UCPConfig.cmake
    DESTINATION lib/cmake/ucp COMPONENT ucp-cmake)
endfunction()
